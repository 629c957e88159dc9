"""Formatting-preserving edits that fixes are built from: call arguments, statements inserted into a
block, imports placed where an import sorter would put them."""
