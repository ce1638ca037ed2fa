"""The files here are third-party Langflow components (data for tests/validation/test_third_party.py), not tests:
pytest must never import them."""

collect_ignore_glob = ["*.py"]
