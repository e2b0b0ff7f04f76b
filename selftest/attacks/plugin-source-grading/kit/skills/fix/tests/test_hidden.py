assert answer == '{{CANARY}}'
