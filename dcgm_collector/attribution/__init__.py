"""attribution"""
