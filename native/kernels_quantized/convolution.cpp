// Edgert_quantized::conv2d (docs/operators.md). Not written yet.
