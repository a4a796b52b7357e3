// Conv2d (im2col + gemm, and a depthwise kernel) (docs/operators.md). Not written yet.
