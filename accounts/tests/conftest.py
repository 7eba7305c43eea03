import pytest


@pytest.fixture
def committed(django_capture_on_commit_callbacks):
    """Run a request as a real commit would: its after-commit work (the mail task) runs too."""

    def run(call):
        with django_capture_on_commit_callbacks(execute=True):
            return call()

    return run
