// Gather, index_select and embedding (docs/operators.md). Not written yet.
