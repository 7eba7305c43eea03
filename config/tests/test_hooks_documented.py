"""The table of hooks in docs/architecture.md says what the code does: every declared hook and every contacts signal
is a row, and each row names exactly the apps (and keys) that register with it."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh process: what the apps register in `AppConfig.ready`, without what tests of this process added.
COLLECT = """
import json, sys, weakref
import django
django.setup()
from django.apps import apps
from django.dispatch import Signal
from core.hooks import Hook
import contacts.signals

def app_of(module):
    return apps.get_containing_app_config(module).label

def key_text(key):
    if isinstance(key, str):
        return key
    if isinstance(key, tuple):
        return "/".join(key)
    return None  # an implementation registered as its own key

found = {}
for name, module in list(sys.modules.items()):
    if module is None or name.split(".")[0] not in ROOTS or ".tests" in name:
        continue
    for attr, value in vars(module).items():
        if isinstance(value, Hook) and value.name == f"{name}.{attr}":
            registrants = {}
            for key, registrant in value.registered_by.items():
                keys = registrants.setdefault(app_of(registrant), [])
                if key_text(key) is not None:
                    keys.append(key_text(key))
            found[value.name] = {app: sorted(keys) for app, keys in registrants.items()}
        elif isinstance(value, Signal) and name == "contacts.signals":
            receivers = [entry[1] for entry in value.receivers]
            receivers = [r() if isinstance(r, weakref.ReferenceType) else r for r in receivers]
            found[f"{name}.{attr}"] = {app_of(r.__module__): [] for r in receivers if r is not None}
print(json.dumps(found))
"""
ROOTS = ["core", "accounts", "contacts", "domains", "segments", "messaging", "campaigns", "workflows", "config"]


def _in_code() -> dict[str, dict[str, list[str]]]:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.test", "PYTHONPATH": str(ROOT)}
    script = f"ROOTS = {ROOTS!r}\n{COLLECT}"
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def _in_docs() -> dict[str, dict[str, list[str]]]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("\n## Hooks\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        hook, owner, _what, registered = (cell.strip() for cell in line.strip("|").split(" | "))
        assert hook.strip("`").split(".")[0] == owner, f"{hook} is declared in {owner}'s package"
        registrants = {}
        if registered != "none":
            for entry in registered.split("; "):
                match = re.fullmatch(r"`([\w.]+)`(?: \((.*)\))?", entry)
                assert match, f"{hook}: cannot read {entry!r}"
                registrants[match[1]] = sorted(re.findall(r"`([^`]+)`", match[2] or ""))
        rows[hook.strip("`")] = registrants
    return rows


def test_the_hooks_table_matches_the_registrations():
    in_code, in_docs = _in_code(), _in_docs()
    assert sorted(in_docs) == sorted(in_code), "a hook is missing from docs/architecture.md or no longer exists"
    for hook, registrants in in_code.items():
        assert in_docs[hook] == registrants, f"{hook}: the docs say {in_docs[hook]}, the code {registrants}"
