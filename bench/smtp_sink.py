"""An SMTP server that accepts every message and keeps none, offering PIPELINING as Postfix's smtp-sink does: for
delivery benchmarks on a machine without Postfix (its own CPU is not the worker's, which `delivery_cpu.py`
measures).

    python bench/smtp_sink.py PORT
"""

import sys
import time

from aiosmtpd.controller import Controller


class Discard:
    async def handle_EHLO(self, server, session, envelope, hostname, responses):
        session.host_name = hostname
        # aiosmtpd reads commands one after the other from its buffer, so pipelined ones are answered in order.
        return [*responses[:-1], "250-PIPELINING", responses[-1]]

    async def handle_DATA(self, server, session, envelope):
        return "250 OK"


if __name__ == "__main__":
    controller = Controller(Discard(), hostname="127.0.0.1", port=int(sys.argv[1]))
    controller.start()
    try:
        while True:
            time.sleep(3600)
    finally:
        controller.stop()
