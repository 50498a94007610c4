; atenmap's tag queries for ATen C++ sources (tree-sitter-cpp).
; Capture names follow tree-sitter's tags convention: @definition.* / @reference.*,
; with the inner node of interest captured as @name. parse.py turns captures into Facts;
; macro-shaped definitions (TORCH_IMPL_FUNC(x) (...) { }) arrive as @definition.function
; and are told apart there, by the declarator's shape.

; Every function body: free functions, methods, operator(), TORCH_IMPL_FUNC(...) blocks.
; fixture: fixtures/aten/src/ATen/native/BinaryOps.cpp  "TORCH_IMPL_FUNC(mul_out)"
(function_definition
  declarator: (_) @name
  body: (compound_statement)) @definition.function

; Classes and structs with a body: functors such as CUDAFunctor_add, sum_functor.
(struct_specifier name: (_) @name body: (field_declaration_list)) @definition.class
(class_specifier name: (_) @name body: (field_declaration_list)) @definition.class

; Calls, including those inside AT_DISPATCH_* lambdas, and namespace-level macro lines
; such as REGISTER_DISPATCH(mul_stub, &mul_kernel) with or without their semicolon.
(call_expression function: (_) @name arguments: (argument_list) @args) @reference.call

; A functor object declared from a class template: CUDAFunctor_add<scalar_t> ufunctor(...);
; kept only where the class is defined in the same file (parse.py checks).
(declaration type: (template_type name: (type_identifier) @name)) @reference.functor_decl

; A function object made in an argument list: gpu_reduce_kernel<scalar_t, out_t>(iter, MeanOps<...>{factor}).
; fixture: fixtures/pytorch-mini/aten/src/ATen/native/cuda/SpecialCases.cu  "ArgMaxOps<acc_t>{}"
(argument_list (compound_literal_expression type: (_) @name)) @reference.functor_arg

; A stub passed as an argument: argmax_argmin_impl(..., argmax_stub).
(argument_list (identifier) @name (#match? @name "_stub$")) @reference.stub_arg

; Lambdas: a profiler names a kernel's closure by its enclosing function and ordinal
; (exp_kernel_cuda(...)::{lambda()#2}); the lookup counts these.
(lambda_expression) @definition.lambda

; #include "…" / <…>
(preproc_include path: (_) @name) @reference.include

; Function-like #defines are read as text, not here: see Note [Defines are read as text] in parse.py.

; Calls tree-sitter misreads (see Note [Calls tree-sitter misreads] in parse.py): the most vexing
; parse, `gemm_internal_cublas<float>(CUDABLAS_GEMM_ARGS(float));` read as a declaration.
; (A call with a braced argument arrives as a nested @definition.function; parse.py tells it apart.)
; fixture: fixtures/pytorch-mini/aten/src/ATen/native/cuda/Blas.cpp  "gemm_internal<float>(GEMM_ARGS(float))"
(declaration
  type: [(template_type) (type_identifier)] @name
  declarator: (parenthesized_declarator)) @reference.vexing_call

; Receivers of member calls (KthvalueLauncher l(k); l.launch<...>(...)) are typed from the
; function's text, only where a member call needs it: see Note [Member calls on locals] in parse.py.
