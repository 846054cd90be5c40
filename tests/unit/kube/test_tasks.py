"""cancel_and_wait: every task has finished when it returns, cancelled or not."""

from __future__ import annotations

import asyncio

from kubetrain.kube.tasks import cancel_and_wait


async def test_every_task_has_finished_when_it_returns() -> None:
    cleaned: list[str] = []

    async def sleeper(name: str) -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0)  # cleanup that itself awaits must still complete
            cleaned.append(name)

    async def quick() -> str:
        return "done"

    tasks = [
        asyncio.create_task(sleeper("a")),
        asyncio.create_task(sleeper("b")),
        asyncio.create_task(quick()),
    ]
    await asyncio.sleep(0)
    await cancel_and_wait(tasks)
    assert all(task.done() for task in tasks)
    assert sorted(cleaned) == ["a", "b"]
    assert tasks[2].result() == "done"
