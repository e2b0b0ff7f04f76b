def main():
    value = 1
    return 0
