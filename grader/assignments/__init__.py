"""The exercises: one module per assignment (cases, twins, legends), the registry and the case store."""
