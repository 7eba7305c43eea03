"""Check that `requirements.txt` alone holds everything the service imports: run in a virtualenv with nothing else
installed, under the production configuration (PostgreSQL, Redis as cache and broker), by `.ci/production.sh`.

1. Every third-party package the project's own code imports (tests and benchmarks aside) is named in
   requirements.txt, not only brought in by another package that could drop it.
2. Every module of the project's own imports, and so does every library module the settings choose by name and
   load only when first used: the broker's transport, the cache backend, the beat scheduler, every email provider
   backend `EMAIL_URL` may name, both file storages, the session engine, gunicorn's threaded worker. A library that
   imports a package it does not declare (kombu's Redis transport and `packaging`) fails here, not in a worker at
   its start.

Usage: python .ci/runtime_imports.py (from the repository, with DJANGO_SETTINGS_MODULE and the environment set)
"""

import ast
import importlib
import importlib.metadata
import pkgutil
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APPS = ("config", "core", "accounts", "contacts", "domains", "segments", "messaging", "campaigns", "workflows")


def is_own_runtime(module: str) -> bool:
    parts = module.split(".")
    return not any(part in ("tests", "migrations", "conftest") or part.startswith("test_") for part in parts)


def distribution_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> set[str]:
    names = set()
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            names.add(distribution_name(re.split(r"[\[=<>~!; ]", line)[0]))
    return names


def undeclared_imports() -> list[str]:
    """Top-level third-party modules the project's runtime code imports, whose distribution requirements.txt does
    not name."""
    owners = importlib.metadata.packages_distributions()
    wanted, problems = declared(), []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            if not is_own_runtime(module):
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                for top in {name.split(".")[0] for name in names}:
                    if top in sys.stdlib_module_names or top in APPS:
                        continue
                    distributions = {distribution_name(d) for d in owners.get(top, [])}
                    if not distributions & wanted:
                        problems.append(
                            f"{path.relative_to(ROOT)}: imports {top} ({', '.join(distributions) or 'not installed'}), not in requirements.txt"
                        )
    return problems


def modules_loaded_by_name() -> list[str]:
    """The library modules the configuration names, imported lazily by their libraries at first use."""
    import anymail.backends
    from django.conf import settings
    from kombu.transport import TRANSPORT_ALIASES

    transport = TRANSPORT_ALIASES[settings.CELERY_BROKER_URL.split("://")[0]]
    return [
        transport.split(":")[0],
        *(cache["BACKEND"].rsplit(".", 1)[0] for cache in settings.CACHES.values()),
        settings.CELERY_BEAT_SCHEDULER.split(":")[0],
        settings.SESSION_ENGINE,
        "storages.backends.s3",
        "django.core.files.storage.filesystem",
        *(info.name for info in pkgutil.iter_modules(anymail.backends.__path__, "anymail.backends.")),
        "gunicorn.workers.gthread",
    ]


def unimportable() -> list[str]:
    import django

    django.setup()
    modules = [*APPS]
    for app in APPS:
        package = importlib.import_module(app)
        modules += [info.name for info in pkgutil.walk_packages(package.__path__, f"{app}.")]
    own, named = [m for m in modules if is_own_runtime(m)], modules_loaded_by_name()
    problems = []
    for module in own + named:
        try:
            importlib.import_module(module)
        except Exception as exc:  # an import that fails in any way fails the check
            problems.append(f"import {module}: {type(exc).__name__}: {exc}")
    print(f"imported: {len(own)} modules of the project's, {len(named)} library modules the settings name")
    return problems


def main() -> int:
    sys.path.insert(0, str(ROOT))
    problems = undeclared_imports() + unimportable()
    for problem in problems:
        print(problem, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
