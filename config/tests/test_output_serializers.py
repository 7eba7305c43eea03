"""OutputSerializer writes what DRF's Serializer writes for the same declaration, and refuses, where it is
declared, a field it cannot write on its own."""

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime

import pytest
from rest_framework import serializers

from core.http.fields import IsoDateTimeField
from core.http.serializers import OutputSerializer

MOMENT = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)


@dataclass
class Child:
    label: str
    size: int


@dataclass
class Row:
    id: uuid.UUID
    name: str
    count: int
    rate: float
    flag: bool
    kind: str
    created_at: datetime
    data: object
    tags: list
    meta: dict
    child: Child
    children: list = field(default_factory=list)
    maybe: str | None = None

    def shout(self) -> str:
        return self.name.upper()


def declaration(base):
    """The same fields on `base`: a plain DRF serializer or an OutputSerializer."""

    class ChildOut(base):
        label = serializers.CharField()
        size = serializers.IntegerField()

    class RowOut(base):
        id = serializers.UUIDField()
        name = serializers.CharField()
        count = serializers.IntegerField()
        rate = serializers.FloatField()
        flag = serializers.BooleanField()
        kind = serializers.ChoiceField(choices=["a", "b"])
        createdAt = IsoDateTimeField(source="created_at")
        data = serializers.JSONField()
        tags = serializers.ListField(child=serializers.CharField())
        meta = serializers.DictField()
        child = ChildOut()
        children = ChildOut(many=True)
        maybe = serializers.CharField(allow_null=True)
        loud = serializers.CharField(source="shout")  # DRF calls a method named as the source
        absent = serializers.CharField(source="nothing", allow_null=True)  # missing: None
        defaulted = serializers.IntegerField(source="nothing", default=7)  # missing: the default
        optional = serializers.CharField(source="nothing", required=False)  # missing: no key

    return RowOut


def row(**overrides) -> Row:
    values = {
        "id": uuid.UUID(int=42),
        "name": "ann",
        "count": 3,
        "rate": 12.5,
        "flag": True,
        "kind": "b",
        "created_at": MOMENT,
        "data": [1, {"x": None}, "é"],
        "tags": ["x", "y"],
        "meta": {"k": 1, "n": None},
        "child": Child("c", 1),
        "children": [Child("d", 2), Child("e", 3)],
        **overrides,
    }
    return Row(**values)


PLAIN, OUTPUT = declaration(serializers.Serializer), declaration(OutputSerializer)


@pytest.mark.parametrize(
    "rows",
    [
        [row()],
        [row(maybe="here", data=None, tags=[], meta={}, children=[]), row(count=0, rate=0.0, flag=False, name="")],
    ],
)
def test_writes_what_drf_writes(rows):
    written = OUTPUT(rows, many=True).data
    assert written == PLAIN(rows, many=True).data
    assert [list(item) for item in written] == [list(item) for item in PLAIN(rows, many=True).data]
    assert OUTPUT(rows[0]).data == PLAIN(rows[0]).data
    first = written[0]
    assert first["createdAt"] == "2026-01-02T03:04:05.678Z" and first["loud"] == rows[0].name.upper()
    assert first["absent"] is None and first["defaulted"] == 7 and "optional" not in first


def test_plain_fields_are_read_and_written_without_drfs_generic_steps(monkeypatch):
    """The fast path of every page: a field that reads one attribute and writes a builtin type costs an
    `attrgetter` and the type's constructor, not DRF's `get_attribute` and `to_representation` per field and row."""

    class Plain(OutputSerializer):
        name = serializers.CharField()
        count = serializers.IntegerField()
        createdAt = IsoDateTimeField(source="created_at")

    rows = [row(), row(name="other", count=3)]
    expected = [{"name": r.name, "count": r.count, "createdAt": "2026-01-02T03:04:05.678Z"} for r in rows]

    def refused(*args, **kwargs):
        raise AssertionError("DRF's generic step was used")

    for method in ("get_attribute", "to_representation"):
        monkeypatch.setattr(serializers.Field, method, refused)
    monkeypatch.setattr(serializers.CharField, "to_representation", refused)
    monkeypatch.setattr(serializers.IntegerField, "to_representation", refused)
    monkeypatch.setattr(serializers.Serializer, "to_representation", refused)
    assert Plain(rows, many=True).data == expected


def test_reads_the_keys_of_mapping_rows():
    class Totals(OutputSerializer):
        name = serializers.CharField()
        uniqueContacts = serializers.IntegerField(source="unique_contacts")
        since = IsoDateTimeField(allow_null=True)

    rows = [
        {"name": "login", "unique_contacts": 2, "since": MOMENT},
        {"name": "x", "unique_contacts": 0, "since": None},
    ]
    assert Totals(rows, many=True).data == [
        {"name": "login", "uniqueContacts": 2, "since": "2026-01-02T03:04:05.678Z"},
        {"name": "x", "uniqueContacts": 0, "since": None},
    ]


def test_a_missing_required_value_is_drfs_error():
    class Named(OutputSerializer):
        name = serializers.CharField()

    with pytest.raises(AttributeError, match="Named"):
        Named(object()).data


@pytest.mark.parametrize(
    ("declare", "message"),
    [
        (lambda: {"shape": serializers.SerializerMethodField()}, "Bad.shape: an output field reads one attribute"),
        (lambda: {"name": serializers.CharField(source="child.label")}, "Bad.name: an output field reads one"),
        (lambda: {"when": serializers.DateTimeField()}, "Bad.when: an OutputSerializer does not write a DateTimeField"),
        (lambda: {"tags": serializers.ListField(child=serializers.DateField())}, "does not write a DateField"),
        (lambda: {"child": declaration(serializers.Serializer)()}, "does not write a RowOut"),
    ],
)
def test_a_field_it_cannot_write_is_refused_where_declared(declare, message):
    with pytest.raises(TypeError, match=message):
        type("Bad", (OutputSerializer,), declare())
