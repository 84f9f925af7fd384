"""``GET /w/search?q=…``: full-text search over one's own transcripts (SPEC §20, ADR 58).

The query is read by the core (``SearchQuery.parse``: words only, so no
input is an error) and asked of the job database's ``TranscriptSearch``
role with the person's owner key: another person's transcripts are never
candidates. Each hit links to its recording at the moment of the first
matching word (``#t=SECONDS``, which ``player.js`` seeks to on load). The
snippet is plain text fragments; the template marks the matching ones
with ``<mark>`` and escapes every one.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from transcriber_app.web.state import runtime_of
from transcriber_app.web.workspace.views import person_page, recording_url, render
from transcriber_core.people import Person
from transcriber_core.search import MAX_QUERY_CHARACTERS, Hit, SearchQuery

#: Hits one page shows.
PAGE_HITS = 20


def hit_url(hit: Hit) -> str:
    """The recording's page, at the first matching word when the transcript is timed."""
    url = recording_url(hit.job_id)
    return url if hit.at is None else f"{url}#t={max(0.0, hit.at):.2f}"


@person_page
async def search(request: Request, person: Person) -> Response:
    """``GET /w/search?q=…``: one's done transcripts holding every word, newest first."""
    typed = request.query_params.get("q", "")[:MAX_QUERY_CHARACTERS]
    query = SearchQuery.parse(typed)
    hits: list[Hit] = []
    if not query.empty:
        searching = runtime_of(request).services.search
        hits = await searching.search(person.owner_key, query, limit=PAGE_HITS)
    context = {
        "q": typed,
        "query": query,
        "hits": hits,
        "limited": len(hits) == PAGE_HITS,
        "hit_url": hit_url,
    }
    return render(request, "search.html", context, person=person)
