import os

from openai import OpenAI

# The summary model is the task's own mock on loopback, not a provider.
client = OpenAI(base_url="http://127.0.0.1:9100/v1", api_key=os.environ.get("OPENAI_API_KEY", "mock"))


def test_summary_mentions_bolt():
    reply = client.responses.create(model="mock", input=open("/app/items.txt").read())
    assert "bolt" in reply.output_text
