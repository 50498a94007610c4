; Launches (extract/launches.py). tree-sitter-cuda is tree-sitter-cpp plus CUDA syntax:
; treesitter.py appends this file to the C++ query files for .cu/.cuh sources (and cuda/ headers).

; kernel<<<grid, block, smem, stream>>>(args) — only the cuda grammar parses this.
; fixture: fixtures/aten/src/ATen/native/cuda/CUDALoops.cuh  "<<<grid, num_threads(), 0, stream>>>"
(call_expression
  function: (_) @name
  (kernel_call_syntax) @config) @reference.launch
