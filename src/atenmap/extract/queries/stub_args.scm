; A stub passed as an argument: argmax_argmin_impl(..., argmax_stub) (extract/calls.py). Its own
; file: a text without "_stub" is queried without it (GATED_QUERY_FILES in treesitter.py), as the
; #match? is tried on every identifier argument of every call.
(argument_list (identifier) @name (#match? @name "_stub$")) @reference.stub_arg
