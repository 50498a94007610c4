; Launches (extract/launches.py). tree-sitter-cuda is tree-sitter-cpp plus CUDA syntax:
; treesitter.py appends this file to the C++ query files for .cu/.cuh sources (and cuda/ headers).

; kernel<<<grid, block, smem, stream>>>(args) — only the cuda grammar parses this.
; fixture: fixtures/pytorch-mini/aten/src/ATen/native/cuda/CUDALoops.cuh  "vectorized_elementwise_kernel<4, func_t, array_t>"
(call_expression
  function: (_) @name
  (kernel_call_syntax) @config) @reference.launch
