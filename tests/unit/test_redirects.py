"""``local_location``: a redirect's target reduced to a path on this server."""

from __future__ import annotations

import pytest

from transcriber_app.web.redirects import local_location


@pytest.mark.parametrize(
    ("location", "expected"),
    [
        ("http://evil.example/admin/", "/admin/"),
        ("https://evil.example:8443/admin/login?next=%2F#top", "/admin/login?next=%2F#top"),
        ("http://evil.example", "/"),
        ("//evil.example/admin/", "/admin/"),
        ("/\\evil.example/admin/", "/evil.example/admin/"),
        ("http://evil.example//other.example/x", "/other.example/x"),
        ("/\t/evil.example/x", "/x"),
    ],
)
def test_absolute_and_protocol_relative_targets_become_local_paths(
    location: str, expected: str
) -> None:
    """Scheme and host are dropped, and no run of slashes is left that a browser reads as a host."""
    assert local_location(location) == expected


@pytest.mark.parametrize("location", ["/api/status/abc", "/admin/?page=2", "login", "../jobs"])
def test_local_targets_are_left_alone(location: str) -> None:
    """A path on this server, absolute or relative, is passed through unchanged."""
    assert local_location(location) == location
