# The sends of these tests take the fixtures the messaging and campaigns tests send with.
from campaigns.tests.conftest import audience  # noqa: F401
from messaging.conftest import send  # noqa: F401
