; Operators written on tensors (extract/operators.py): `self * vec2`, `self != self`, `-grad`,
; `result += bias`. Kept only where an operand is a name the function declares as a Tensor, so
; only expressions with a plain name on one side are matched.
; fixture: fixtures/pytorch-mini/aten/src/ATen/native/LinearAlgebra.cpp  "self.reshape({self.size(0), 1}) * vec2"
(binary_expression left: (identifier) @left right: (_) @right) @reference.tensor_operator
(binary_expression left: (_) @left right: (identifier) @right) @reference.tensor_operator
(unary_expression argument: (identifier) @right) @reference.tensor_operator
(assignment_expression left: (identifier) @left right: (_) @right) @reference.tensor_operator
