; The branches around a statement, for `atenmap --why` (read by extract/branches.py, one file at a
; time, at query time; not part of the index). Each pattern's first capture names the branch kind.
; fixture: fixtures/pytorch-mini/aten/src/ATen/native/cuda/WhyBranches.cu

; if (contiguous) { ... }  /  } else { ... }
(if_statement condition: (_) @cond consequence: (_) @then) @branch.if
(if_statement condition: (_) @cond alternative: (else_clause) @else) @branch.else

; An early return: `if (iter.numel() == 0) return;`, `if (c) { ...; return; }`: what follows it
; in the same block runs only when c is false (parse.py gives the block's end, parent_end).
(if_statement
  condition: (_) @cond
  consequence: [(return_statement) (compound_statement (return_statement))]
  !alternative) @branch.return

; cond ? a : b
(conditional_expression condition: (_) @cond consequence: (_) @then alternative: (_) @else) @branch.ternary

; switch (vec_size) { case 4: ... }
(switch_statement condition: (_) @cond body: (_) @body) @branch.switch
(case_statement) @branch.case

; AT_DISPATCH_* macros are read from the text (extract/branches.py): tree-sitter recovers from
; torchgen's `AT_DISPATCH_CASE(a, ...) AT_DISPATCH_CASE(b, ...)` with ERROR nodes.

; The function a statement is in: branches outside it do not count.
(function_definition body: (_) @body) @branch.function
