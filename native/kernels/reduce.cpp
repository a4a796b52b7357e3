// Sum, mean, max, min, any, all, argmax and argmin (docs/operators.md). Not written yet.
