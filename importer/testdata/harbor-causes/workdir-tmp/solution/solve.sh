#!/bin/sh
echo enod > /tmp/result.txt
