"""The published schema describes the resources as the API reference does, to the field: a client generated from it
gets the types the service writes (objects, enums, the items of lists), not an untyped value."""

import pytest

from config.tests.openapi import published_schema


@pytest.fixture
def components(db):
    return published_schema()["components"]["schemas"]


def resolve(components, schema: dict) -> dict:
    while "$ref" in schema:
        schema = components[schema["$ref"].rsplit("/", 1)[1]]
    return schema


@pytest.mark.parametrize(
    ("component", "path", "expected"),
    [
        ("ContactOutput", ["data"], {"type": "object"}),
        ("EventOutput", ["data"], {"type": "object"}),
        ("Field", ["type"], {"enum": ["string", "number", "boolean", "date", "object", "array"]}),
        ("SegmentOutput", ["type"], {"type": "string", "enum": ["DYNAMIC", "STATIC"]}),
        ("DomainOutput", ["status"], {"type": "string", "enum": ["pending", "verified"]}),
        ("TemplateUsage", ["campaigns", "items"], {"required": ["id", "name", "status"]}),
        ("TemplateUsage", ["workflowSteps", "items"], {"required": ["stepId", "workflowId", "workflowName"]}),
    ],
)
def test_a_resource_field_has_the_documented_type(components, component, path, expected):
    schema = resolve(components, components[component])
    for step in path:
        schema = resolve(components, schema["properties"][step] if step != "items" else schema["items"])
    assert {key: schema.get(key) for key in expected} == expected
