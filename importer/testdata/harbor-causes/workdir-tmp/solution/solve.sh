#!/bin/sh
echo done > /tmp/result.txt
