"""The models an OpenAI-compatible endpoint lists at `/v1/models`, for the page's model pickers.

The official `openai` SDK asks (`client.models.list()`). Which endpoint and which key may be asked is the trust
policy's call (app/ui/visitor.py `listing_endpoint`); this module only asks and turns any failure into one
sentence that never quotes the server's error body or the key.
"""

from __future__ import annotations

from app.errors import UserError
from app.sources import mercury, openai_chat
from app.sources.openai_chat import check_base_url, check_key, host_of, sdk_client

LIST_TIMEOUT = 10.0  # seconds: a picker waits for this at most before saying the listing failed
TYPE_A_NAME = "you can still type a model name"
# source kind -> (the environment variable with the host's base URL, the one with the host's key, the default URL)
LISTED = {"mercury": ("INCEPTION_BASE_URL", "INCEPTION_API_KEY", mercury.DEFAULT_BASE_URL),
          "openai": ("OPENAI_BASE_URL", "OPENAI_API_KEY", openai_chat.DEFAULT_BASE_URL)}
DEFAULT_MODELS = {"mercury": mercury.DEFAULT_MODEL}  # what a picker shows when nothing is chosen yet


def list_models(base_url: str, api_key: str, key_hint: str, timeout: float = LIST_TIMEOUT) -> list[str]:
    """The model ids the endpoint at `base_url` lists, sorted; raises UserError (one sentence) when it cannot."""
    import openai

    base_url = check_base_url(base_url)
    host = host_of(base_url)
    client = sdk_client(check_key(api_key, key_hint), base_url, timeout, 0)
    try:
        return sorted({str(m.id) for m in client.models.list() if getattr(m, "id", None)})
    except openai.APITimeoutError:
        raise UserError(f"{host} did not answer within {timeout:g} s, so no models are listed: "
                        f"{TYPE_A_NAME}.") from None
    except openai.APIConnectionError:
        raise UserError(f"Could not reach {host} to list its models: {TYPE_A_NAME}.") from None
    except openai.AuthenticationError:
        raise UserError(f"{host} rejected the API key ({key_hint}), so no models are listed: "
                        f"{TYPE_A_NAME}.") from None
    except openai.APIStatusError as err:
        raise UserError(f"{host} did not list its models (HTTP {err.status_code}): {TYPE_A_NAME}.") from None
    except (openai.APIError, ValueError, TypeError):  # an answer that is not a model list
        raise UserError(f"{host} sent something that is not a model list: {TYPE_A_NAME}.") from None
