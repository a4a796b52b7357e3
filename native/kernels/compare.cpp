// Maximum, minimum, pow, the comparisons, the logical operators and where (docs/operators.md). Not written yet.
