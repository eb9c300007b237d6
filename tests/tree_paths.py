"""Where the test tree and the repository are, for tests in any folder under tests/."""

from pathlib import Path

TESTS_DIR = Path(__file__).resolve().parent  # helpers, patches, fixtures and data live here
REPO_ROOT = TESTS_DIR.parent
