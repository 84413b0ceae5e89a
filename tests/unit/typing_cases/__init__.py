"""User scripts that mypy --strict checks against the operators' declared shapes (test_typed_overloads)."""
