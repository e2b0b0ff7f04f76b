#!/bin/sh
echo up > /app/status.txt
