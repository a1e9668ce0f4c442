# Hand-written checks of the dialect case's SDK (the generic oracle covers the subset only).
# mypy --strict reports an unused "type: ignore", so every ignore below must meet its error.
from sdk_dialect import (
    CreateIssueArgs,
    JsonValueArgs,
    MergeConfigArgs,
    Node,
    ShapeArgs,
    ShapeOutput,
    Tools,
    TreeWalkArgs,
    ZodSearchArgs,
)


async def calls(tools: Tools) -> None:
    issue = await tools.create_issue({"title": "t", "labels": [{"name": "bug"}], "priority": "high"})
    number: int = issue["number"]
    wrong: str = issue["number"]  # type: ignore[assignment]
    total: float = await tools["get-sum"]({"a": 1, "b": 2})
    await tools["get-sum"]({"a": 1})  # type: ignore[typeddict-item]
    await tools["create_issue"]({"title": "t", "priority": "urgent"})  # type: ignore[typeddict-item]
    await tools["no-such-tool"]({})  # type: ignore[call-overload]
    print(number, wrong, total)


tree: Node = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
bad_tree: Node = {"name": "a", "children": [{"title": "b"}]}  # type: ignore[typeddict-item]
walk: TreeWalkArgs = {"root": tree, "max_depth": 3}
issue: CreateIssueArgs = {"title": "t", "body": None, "assignees": ["me"]}
search: ZodSearchArgs = {"query": "q", "range": (1, 2), "filters": {"k": "v"}, "sort": 3, "mode": None}
bad_range: ZodSearchArgs = {"query": "q", "range": (1, "2")}  # type: ignore[typeddict-item]
bad_mode: ZodSearchArgs = {"query": "q", "mode": "slow"}  # type: ignore[typeddict-item]
bad_extra: ZodSearchArgs = {"query": "q", "extra": 1}  # type: ignore[typeddict-unknown-key]
merged: MergeConfigArgs = {"a": "x", "b": 2}
bad_merged: MergeConfigArgs = {"b": 2}  # type: ignore[typeddict-item]
shape: ShapeArgs = {"kind": "square", "size": 2}
circle: ShapeArgs = {"kind": "circle"}
area: ShapeOutput = {"area": 1, "self": {"area": 2}}
value: JsonValueArgs = {"value": {"a": [1, "x", None]}}
