// Max_pool2d, avg_pool2d, adaptive_avg_pool2d and upsample_nearest2d (docs/operators.md). Not written yet.
