; Operators written on tensors (extract/operators.py): `self * vec2`, `self != self`, `-grad`,
; `result += bias`. Kept only where an operand is a name the function declares as a Tensor (so
; expressions with a plain name on one side are matched), or an `at::` call given one.
; fixture: fixtures/pytorch-mini/aten/src/ATen/native/LinearAlgebra.cpp  "self.reshape({self.size(0), 1}) * vec2"
(binary_expression left: (identifier) @left right: (_) @right) @reference.tensor_operator
(binary_expression left: (_) @left right: (identifier) @right) @reference.tensor_operator
; arithmetic on operator calls given a tensor: `at::narrow_symint(result, dim, 1, n) - at::narrow_symint(result, ...)`
; fixture: fixtures/pytorch-mini/aten/src/ATen/native/LinearAlgebra.cpp  "at::slice(self, 0, 1) - at::slice(self, 0, 0, -1)"
(binary_expression left: (call_expression function: (qualified_identifier)) @left right: (_) @right) @reference.tensor_operator
(unary_expression argument: (identifier) @right) @reference.tensor_operator
(assignment_expression left: (identifier) @left right: (_) @right) @reference.tensor_operator
