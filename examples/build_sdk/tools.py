"""The tools of an application: the registry that ``dsh-codegen sdk --registry tools:registry`` reads."""

from __future__ import annotations

from typing import Literal, TypedDict

from dsh_codegen import ToolRegistry, tool


class Forecast(TypedDict):
    city: str
    celsius: float
    sky: Literal["clear", "cloudy", "rain"]


@tool
async def forecast(city: str, days: int = 1) -> list[Forecast]:
    """The weather forecast for a city."""
    return [{"city": city, "celsius": 20.0, "sky": "clear"} for _ in range(days)]


registry = ToolRegistry()
registry.register(forecast)
