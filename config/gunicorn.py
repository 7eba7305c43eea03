"""The web process's gunicorn settings: `make run`, the README's production command, the integration tests and
the benchmarks all start `gunicorn -c config/gunicorn.py config.wsgi --bind ...`. Options given on the command line
win over these."""

import os

# One process per core; threads cover the time a request waits on PostgreSQL and Redis.
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
threads = int(os.environ.get("WEB_THREADS", "4"))

# A listening socket per worker (SO_REUSEPORT): the kernel spreads new connections evenly over the workers. On one
# shared socket the worker that wins the accept race keeps each connection for its keep-alive life; splits such as
# 38/12 of 50 connections made the busier worker queue, and the slowest answers of /v1/send took half as long
# again (docs/performance.md). The price: connections still waiting in the accept queue of a worker that is
# restarted are reset, where a shared socket would hand them to a sibling.
reuse_port = True


def child_exit(server, worker):
    # With PROMETHEUS_MULTIPROC_DIR, the files of a worker that exited are merged into the totals (core.metrics).
    from core.metrics import process_exited

    process_exited(worker.pid)
