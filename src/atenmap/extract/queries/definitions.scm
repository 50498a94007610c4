; Definitions (extract/definitions.py). Capture names follow tree-sitter's tags convention:
; @definition.* / @reference.*, with the inner node of interest captured as @name. Macro-shaped
; definitions (TORCH_IMPL_FUNC(x) (...) { }) arrive as @definition.function and are told apart
; there, by the declarator's shape. treesitter.py joins the query files of a language into one
; query, run once per parse (the order: the pattern registry, extract/registry.py).

; Every function body: free functions, methods, operator(), TORCH_IMPL_FUNC(...) blocks.
; fixture: fixtures/aten/src/ATen/native/BinaryOps.cpp  "TORCH_IMPL_FUNC(mul_out)"
(function_definition
  declarator: (_) @name
  body: (compound_statement)) @definition.function

; Classes and structs with a body: functors such as CUDAFunctor_add, sum_functor.
(struct_specifier name: (_) @name body: (field_declaration_list)) @definition.class
(class_specifier name: (_) @name body: (field_declaration_list)) @definition.class
