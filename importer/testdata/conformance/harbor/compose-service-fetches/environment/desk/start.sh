#!/bin/sh
# start the desk service
exec uvx --from desk-server desk --port 7002
