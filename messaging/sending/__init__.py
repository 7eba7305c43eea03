"""The one send path: input parsing, queueing, dispatch, delivery, transport, MIME and throttling."""
