"""The shipped model (package data): the joblib pipeline, its compact export and their pins."""
