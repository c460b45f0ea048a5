package server

import (
	"net/http"
	"net/http/httptest"
)

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

func mustRequest(method, target string) *http.Request {
	return httptest.NewRequest(method, target, nil)
}
