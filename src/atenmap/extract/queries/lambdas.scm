; Lambdas (extract/calls.py): a profiler names a kernel's closure by its enclosing function and
; ordinal (exp_kernel_cuda(...)::{lambda()#2}); the lookup counts these.
(lambda_expression) @definition.lambda
