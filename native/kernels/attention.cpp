// Scaled_dot_product_attention (docs/operators.md). Not written yet.
