; #include "…" / <…> (extract/definitions.py).
(preproc_include path: (_) @name) @reference.include

; Function-like #defines are read as text, not here: see Note [Defines are read as text] in blanking.py.
