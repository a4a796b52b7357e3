// The unary float32 functions, abs, neg and clamp (docs/operators.md). Not written yet.
