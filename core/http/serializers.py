"""The base of output serializers: one class per response shape writes the answer and describes it in the schema.

DRF's `Serializer` prepares every response from scratch (a deep copy of the declared fields per serializer
instance) and resolves every field of every row through the general `get_attribute` and `to_representation`; on a
100-row page that cost three times what building the dicts by hand did. `OutputSerializer` keeps the declaration,
the schema and `Serializer(rows, many=True).data`, and does the work that does not depend on the row once, when the
class is declared.
"""

from collections.abc import Mapping
from operator import attrgetter, itemgetter

from rest_framework import serializers
from rest_framework.fields import SkipField, _UnvalidatedField

from core.http.fields import IsoDateTimeField
from core.time import iso

_MISSING = object()
# Row type -> whether it is read by key (a Mapping, as DRF decides): the ABC check costs more than writing a field.
_is_mapping: dict[type, bool] = {}


class OutputSerializer(serializers.Serializer):
    # Written as `OutputSerializer(instance).data` or `OutputSerializer(rows, many=True).data`. (A comment, not a
    # docstring: spectacular would describe every subclass's schema with it.)
    #
    # Every field reads one attribute (of an object row: a model instance, a dataclass) or key (of a mapping row: a
    # `values()` row), named by its `source`, and converts the value on its own, without the serializer's context:
    # str, int, float, bool, choice, UUID, JSON, `IsoDateTimeField`, a list or dict of those, or a nested
    # `OutputSerializer` (`many=True` too). A class declaring anything else is a TypeError where it is declared; it
    # belongs on `serializers.Serializer`. The values are DRF's: None is written as None, and a missing value or a
    # method (DRF calls a method named as the source) goes through the field's own `get_attribute`.

    # Per class, from `__init_subclass__`: (key, reader, writer, field) per readable field, in order; with
    # `attrgetter`s for object rows, with `itemgetter`s for mapping rows. The fields are one instance's, shared by
    # every row and response: each converts a value on its own.
    _steps: tuple[tuple, tuple] = ((), ())

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        by_attribute, by_key = [], []
        for field in cls()._readable_fields:
            name = f"{cls.__name__}.{field.field_name}"
            if field.source == "*" or len(field.source_attrs) != 1:
                raise TypeError(f"{name}: an output field reads one attribute or key")
            write = _writer(field, name)
            by_attribute.append((field.field_name, attrgetter(field.source), write, field))
            by_key.append((field.field_name, itemgetter(field.source), write, field))
        cls._steps = (tuple(by_attribute), tuple(by_key))

    def to_representation(self, instance):
        row_type = type(instance)
        is_mapping = _is_mapping.get(row_type)
        if is_mapping is None:
            is_mapping = _is_mapping[row_type] = isinstance(instance, Mapping)
        data = {}
        for name, read, write, field in self._steps[is_mapping]:
            try:
                value = read(instance)
            except (KeyError, AttributeError):
                value = _MISSING
            if value is _MISSING or callable(value):
                try:
                    value = field.get_attribute(instance)  # the field's default, None or no key; a method called
                except SkipField:
                    continue
            if value is None:
                data[name] = None
            else:
                data[name] = value if write is None else write(value)
        return data


def _writer(field: serializers.Field, name: str):
    """How the field converts a value: a builtin where its `to_representation` amounts to one (a call saved per
    field and row), None where it returns the value as it is, else its own method."""
    method = type(field).to_representation
    if method is serializers.CharField.to_representation:
        return str
    if method is serializers.IntegerField.to_representation:
        return int
    if method is serializers.FloatField.to_representation:
        return float
    if method is serializers.UUIDField.to_representation and field.uuid_format == "hex_verbose":
        return str
    if method is IsoDateTimeField.to_representation:
        return iso
    if (method is serializers.JSONField.to_representation and not field.binary) or (
        method is _UnvalidatedField.to_representation  # the items of a ListField or DictField declared without child
    ):
        return None
    if method in (serializers.BooleanField.to_representation, serializers.ChoiceField.to_representation):
        return field.to_representation
    if method in (serializers.ListField.to_representation, serializers.DictField.to_representation):
        _writer(field.child, name)  # the items must convert on their own too
        return field.to_representation
    if isinstance(field, OutputSerializer) or (
        isinstance(field, serializers.ListSerializer) and isinstance(field.child, OutputSerializer)
    ):
        return field.to_representation
    raise TypeError(f"{name}: an OutputSerializer does not write a {type(field).__name__}")
