answer = '{{CANARY}}'
