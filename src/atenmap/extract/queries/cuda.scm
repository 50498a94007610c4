; tree-sitter-cuda is tree-sitter-cpp plus CUDA syntax. parse.py loads cpp.scm first and
; appends this file for .cu/.cuh sources.

; kernel<<<grid, block, smem, stream>>>(args) — only the cuda grammar parses this.
; fixture: fixtures/aten/src/ATen/native/cuda/CUDALoops.cuh  "<<<grid, num_threads(), 0, stream>>>"
(call_expression
  function: (_) @name
  (kernel_call_syntax) @config) @reference.launch
