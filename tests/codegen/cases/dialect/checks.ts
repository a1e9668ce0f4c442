// Hand-written checks of the dialect case's SDK (the generic oracle covers the subset only).
// Every @ts-expect-error must meet an error, so the rejections are checked as well.
import type { Json, Node, ToolArgsMap, ToolOutputMap } from "./sdk_dialect";
import { tools } from "./sdk_dialect";

async function calls(): Promise<void> {
  const issue = await tools.create_issue({ title: "t", labels: [{ name: "bug" }], priority: "high", body: null });
  const n: number = issue.number;
  // @ts-expect-error: the output object is closed and typed
  const wrong: string = issue.number;
  void n;
  void wrong;
  const sum: number = await tools["get-sum"]({ a: 1, b: 2 });
  void sum;
  // @ts-expect-error: b is required
  await tools["get-sum"]({ a: 1 });
  // @ts-expect-error: an unknown priority
  await tools.create_issue({ title: "t", priority: "urgent" });
}
void calls;

const tree: Node = { name: "a", children: [{ name: "b", children: [{ name: "c" }] }] };
// @ts-expect-error: children are Nodes
const badTree: Node = { name: "a", children: [{ title: "b" }] };
const walk: ToolArgsMap["tree_walk"] = { root: tree, max_depth: 3 };
const summary: ToolOutputMap["tree_walk"] = { count: 1, deepest: null };
const json: Json = { a: [1, "x", { b: null }] };
const search: ToolArgsMap["zod_search"] = { query: "q", range: [1, 2], filters: { k: "v" }, sort: 3, mode: null };
// @ts-expect-error: range is a pair of numbers
const badRange: ToolArgsMap["zod_search"] = { query: "q", range: [1, "2"] };
// @ts-expect-error: the false schema admits no value
const badNothing: ToolArgsMap["zod_search"] = { query: "q", nothing: 1 };
// @ts-expect-error: zod's additionalProperties false
const badExtra: ToolArgsMap["zod_search"] = { query: "q", extra: 1 };
const found: ToolOutputMap["zod_search"] = ["a", 1, 2];
// @ts-expect-error: the first element is a string
const badFound: ToolOutputMap["zod_search"] = [1, 2];
const merged: ToolArgsMap["merge_config"] = { a: "x", b: 2 };
// @ts-expect-error: a is required by the first allOf part
const badMerged: ToolArgsMap["merge_config"] = { b: 2 };
const shape: ToolArgsMap["shape"] = { kind: "square", size: 2 };
const circle: ToolArgsMap["shape"] = { kind: "circle" };
// @ts-expect-error: a square needs a size
const badShape: ToolArgsMap["shape"] = { kind: "square" };
const area: ToolOutputMap["shape"] = { area: 1, self: { area: 2 } };
void [tree, badTree, walk, summary, json, search, badRange, badNothing, badExtra, found, badFound];
void [merged, badMerged, shape, circle, badShape, area];
