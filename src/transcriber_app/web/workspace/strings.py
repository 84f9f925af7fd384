"""The words the workspace's scripts show, in the page's language (SPEC §26, ADR 77).

Each page with scripts carries them as JSON in the ``data-strings``
attribute of the ``static/strings.js`` script element, which reads them
for the other scripts (no inline script: the CSP allows none); they keep
the English as a fallback. ``%(name)s`` placeholders are filled in the browser.
"""

from __future__ import annotations

from transcriber_app.web.language import _


def page_strings() -> dict[str, str]:
    """Every string a workspace script puts on the page, by the key the script asks for."""
    return {
        # upload.js
        "title_of": _("Title of %(name)s"),
        "ready_check": _("ready: check its title, then Send"),
        "waiting": _("waiting to be sent"),
        "sending": _("sending"),
        "sending_file": _("Sending %(name)s"),
        "stored": _("sent; being stored"),
        "checking_link": _("sent; checking the link"),
        "sending_link": _("Sending the link"),
        "sent": _("sent"),
        "sent_waiting": _("sent; waiting for its turn"),
        "refused": _("refused"),
        "service_refused": _("The service refused the file"),
        "connection_broke": _("The connection broke before the file was taken; try again"),
        "too_large": _("The file is larger than the limit of %(limit)s"),
        # live.js
        "delete_named": _("Delete %(name)s"),
        # record.js
        "record": _("Record"),
        "stop": _("Stop"),
        "nothing_recorded": _("Nothing was recorded."),
        "recorded": _("Recorded %(time)s; sending it."),
        "asking_microphone": _("Asking for the microphone…"),
        "recording_now": _("Recording. Stop sends it."),
        "microphone_refused": _("The browser was not allowed to use the microphone."),
        "no_microphone": _("No microphone could be opened."),
        # summary.js
        "summary_stale": _(
            "The transcript changed after this summary was made; regenerate it to catch up."
        ),
        "summary_by": _("Made by %(model)s."),
        "the_model": _("the language model"),
        "regenerate": _("Regenerate"),
        "generate": _("Generate"),
        "summary_failed": _("The summary could not be made: %(reason)s."),
        "unknown_reason": _("unknown reason"),
        "summarising": _("Summarising… it shows here when it is ready."),
        "no_summary": _("No summary yet."),
        "summary_unreadable": _("The summary cannot be read now."),
        "summary_not_asked": _("The summary was not asked for."),
        "no_answer_service": _("The service did not answer; try again."),
        "thinking": _("Thinking…"),
        "no_answer_now": _("No answer now."),
        "too_many_questions": _("Too many questions at once: ask again in %(seconds)s s."),
        # editor.js
        "saving": _("Saving…"),
        "saved": _("Saved."),
        "not_saved": _("The correction was not saved."),
        "unreachable": _("The correction was not saved: the service could not be reached."),
        "turn_text": _("Corrected text of this turn"),
        "save": _("Save"),
        "cancel": _("Cancel"),
        "edit": _("Edit"),
        "edit_turn": _("Edit this turn"),
        # player.js
        "audio_gone": _("The audio cannot be played: it may no longer be stored."),
    }
