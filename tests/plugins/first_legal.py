"""The bot the test plugin modules here offer (tests only): the first legal action, at once.
Those modules differ in where their import is slow; what they play does not matter."""


class FirstLegal:
    def decide(self, request):
        return request.legal[0]
