#!/bin/sh
echo done > /app/status.txt
