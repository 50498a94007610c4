; Calls (extract/calls.py).

; Calls, including those inside AT_DISPATCH_* lambdas, and namespace-level macro lines
; such as REGISTER_DISPATCH(mul_stub, &mul_kernel) with or without their semicolon
; (the dispatch macros among them go to extract/dispatch.py).
(call_expression function: (_) @name arguments: (argument_list) @args) @reference.call

; A functor object declared from a class template: CUDAFunctor_add<scalar_t> ufunctor(...);
; kept only where the class is defined in the same file (calls.py checks).
(declaration type: (template_type name: (type_identifier) @name)) @reference.functor_decl

; A function object made in an argument list: gpu_reduce_kernel<scalar_t, out_t>(iter, MeanOps<...>{factor}).
; fixture: fixtures/pytorch-mini/aten/src/ATen/native/cuda/SpecialCases.cu  "ArgMaxOps<acc_t>{}"
(argument_list (compound_literal_expression type: (_) @name)) @reference.functor_arg

; A stub passed as an argument: argmax_argmin_impl(..., argmax_stub).
(argument_list (identifier) @name (#match? @name "_stub$")) @reference.stub_arg
