; Calls tree-sitter misreads (extract/calls.py, Note [Calls tree-sitter misreads]): the most vexing
; parse, `gemm_internal_cublas<float>(CUDABLAS_GEMM_ARGS(float));` read as a declaration.
; (A call with a braced argument arrives as a nested @definition.function; definitions.py hands it to calls.py.)
; fixture: fixtures/pytorch-mini/aten/src/ATen/native/cuda/Blas.cpp  "gemm_internal<float>(GEMM_ARGS(float))"
; Qualified, `at::native::gemm_internal_ck<float>(CUDABLAS_GEMM_ARGS(float));` (CUDABlas.cpp's USE_ROCM
; branches): the type is a qualified_identifier whose last name is a template_type (calls.py checks).
; fixture: fixtures/rocm/MiniCkBlas.cpp  "at::native::mini_gemm_ck<float>(MINI_GEMM_ARGS(float))"
(declaration
  type: [(template_type) (type_identifier) (qualified_identifier)] @name
  declarator: (parenthesized_declarator)) @reference.vexing_call

; Receivers of member calls (KthvalueLauncher l(k); l.launch<...>(...)) are typed from the
; function's text, only where a member call needs it: see Note [Member calls on locals] in calls.py.
