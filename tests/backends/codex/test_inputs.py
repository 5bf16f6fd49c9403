"""A turn's parts as Codex input items."""

from __future__ import annotations

from core.backend import DataContent, FileContent, TextContent
from wrappers.codex.inputs import input_items

PDF_URL = "https://example.test/r.pdf"


def test_text_parts_stay_text() -> None:
    assert input_items((TextContent("hi"), TextContent("there"))) == [
        {"type": "text", "text": "hi", "text_elements": []},
        {"type": "text", "text": "there", "text_elements": []},
    ]


def test_images_go_as_images_inline_ones_as_data_urls() -> None:
    items = input_items(
        (
            FileContent(data=b"\x89PNG", media_type="image/png"),
            FileContent(url="https://example.test/a.png", media_type="image/png"),
        )
    )

    assert items == [
        {"type": "image", "url": "data:image/png;base64,iVBORw=="},
        {"type": "image", "url": "https://example.test/a.png"},
    ]


def test_text_files_are_inlined_other_files_named() -> None:
    items = input_items(
        (
            FileContent(data=b"print(1)\n", name="a.py", media_type="text/x-python"),
            FileContent(data=b"\x00\x01", name="blob.bin", media_type="application/octet-stream"),
            FileContent(
                url="https://example.test/r.pdf", name="r.pdf", media_type="application/pdf"
            ),
        )
    )

    assert [item["text"] for item in items] == [
        "Attached file a.py:\nprint(1)\n",
        "Attached file blob.bin (application/octet-stream) could not be passed to Codex.",
        f"Attached file r.pdf (application/pdf): {PDF_URL}",
    ]


def test_data_parts_are_json_text() -> None:
    assert input_items((DataContent({"a": 1}),))[0]["text"] == '{\n  "a": 1\n}'


def test_an_empty_message_is_one_empty_text() -> None:
    assert input_items(()) == [{"type": "text", "text": "", "text_elements": []}]
